"""Settings: the config file, `$SKYC_HOME`, and which infra is enabled and why."""
