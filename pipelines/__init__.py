"""Spark stages of the binlog lakehouse (bronze, silver, gold, quality) and the session factory."""
