"""skyc's own state: clusters, their jobs, managed jobs, events and the per-cluster
locks (sqlite, with its migrations and kept copies)."""
