"""Orchestrator definitions shipped with the project: point a scheduler's definitions folder here."""
