"""Bronze layer: binlog files as ingested, one row per event, and what could not be framed."""
