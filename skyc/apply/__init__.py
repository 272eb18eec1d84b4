"""The apply stage: the order of `apply` (optimize, compile, provision with failover,
mount, sync, setup, run, down), what is refused before anything is created, stop and
start, and what `status --refresh` concludes. Library functions the CLI and the jobs
controller call alike."""
