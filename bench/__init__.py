"""Benchmarks: an OLTP binlog generator and a decoder-throughput comparison (see ``bench/README.md``)."""
