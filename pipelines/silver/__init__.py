"""Silver layer: decoded metadata of the binlogs (table maps, DDL, schema history)."""
