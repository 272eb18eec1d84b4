"""skyc's own state: clusters, their jobs, managed jobs, events and the per-cluster
locks; in sqlite (the embedded default, with its migrations and kept copies) or in a
team's PostgreSQL database, one schema and its migrations for both."""
