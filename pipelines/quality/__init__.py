"""Quality gates between the stages: binlog-aware checks as data, validated with great-expectations."""
