"""The review workflow: saved plan files (``skyc plan -o FILE``, ``skyc apply FILE``)
and the digests that tell a reviewed plan from a stale one."""
