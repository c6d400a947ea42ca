"""The current stage: current state (``binlog_current``) and row history (``binlog_history``) of every gold table."""
