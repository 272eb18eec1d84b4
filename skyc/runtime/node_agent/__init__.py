"""skyc node agent: a single stdlib-only file shipped to every node (Python >= 3.8).

skyc uploads it to ``~/.skyc/agent_<version>.py`` and runs sub-commands over the
node's transport, importing it (so that Python keeps its compiled code) and calling
:func:`main`. Job state lives under ``~/.skyc/jobs/<job_id>/``:

    meta.json        name, submission time, number of nodes (head only)
    <phase>.sh       the phase's script (run as ``bash <phase>.sh``: no argv size limit)
    <phase>.log      output of the phase's command (phase: setup | run)
    <phase>.pgid     process group of the phase's command
    <phase>.exit     exit code, written when the command ends
    cancelled        present when the job was stopped; holds why: user, peer (another
                     node failed) or abort (the client gave up before the job ran)
    mounts.json      the bucket mounts the job uses (its run ends once their writes
                     have reached the buckets)

Bucket mounts are kept in ``~/.skyc/mounts/`` (one record per target, mode 0600, with
the mount's rclone cache and log); the store's settings and credentials are given to
rclone's environment only.

A job's environment (secrets included) arrives on stdin (:func:`encode_run_spec`)
and is kept in memory only. Every process a job starts inherits
``SKYC_JOB_MARK=<node token>/<job>`` (the token is kept in ``~/.skyc/token``), so
cancel and stop-all find the processes that left the job's process group (``setsid``
daemons) through ``/proc/<pid>/environ``. Sub-commands that stream end
with a trailer line on stderr, ``__skyc_exit__ <code> [cancelled]``, so the caller can
tell the job's exit code from a broken connection.

Its source is the package ``skyc/runtime/node_agent/``, one module per concern, in
the order they are joined: base (files, token, job marks), status (the job table),
accelerators (GPU and TPU detection), sync (receiving a synced tree), mounts (buckets
through rclone), supervise (running and following phases), stop (cancel, stop-all),
autostop (the idle watch), cli (the command line). Each imports only os, sys and time
at its top, the stdlib elsewhere where it is used, and names from the modules before
it. ``skyc.runtime.agent_bundle``
joins them into the one file shipped, ``skyc/runtime/agent.py``.
"""
