"""spark-submit entry points: one per stage and one for all, thin wrappers over ``pipelines.run``."""
