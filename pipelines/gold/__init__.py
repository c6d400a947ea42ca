"""Gold layer: row changes decoded from the rows events, as a unified table and one typed table per source table."""
