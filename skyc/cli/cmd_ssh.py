"""``skyc ssh`` and ``skyc ssh-config``: OpenSSH sessions to a cluster's nodes."""

from __future__ import annotations

from pathlib import Path

import typer

_SSH_CONFIG_HELP = """Write $SKYC_HOME/ssh/config: one Host entry per node of every cluster.

`<cluster>` is the head node, `<cluster>-<node>` the others (e.g. train-worker1),
each with its address, user, key and the host key skyc pinned. skyc rewrites the
file after every apply and destroy. With --install, one line `Include
$SKYC_HOME/ssh/config` is added at the top of ~/.ssh/config (only then, and only
once), so that plain `ssh CLUSTER`, scp, rsync and editors' remote modes work.
"""


def ssh_config_cmd(
    install: bool = typer.Option(False, "--install",
                                 help="Add the Include line to ~/.ssh/config."),
) -> None:
    from skyc.cli.output import print_line
    from skyc.runtime.sshconfig import include_line, install_include, write_config
    from skyc.settings.config import skyc_home

    path = write_config(skyc_home())
    print_line(f"wrote {path}")
    if install:
        added = install_include(Path.home(), path)
        print_line(f"{'added' if added else 'already in'} ~/.ssh/config: {include_line(path)}")
    else:
        print_line(f"to use `ssh CLUSTER` everywhere: skyc ssh-config --install "
                   f"(adds `{include_line(path)}` to ~/.ssh/config)")


def ssh_cmd(
    cluster: str = typer.Argument(..., metavar="CLUSTER", help="Cluster name."),
    command: list[str] = typer.Argument(None, metavar="COMMAND",
                                        help="A command to run instead of a shell."),
    node: str | None = typer.Option(None, "--node", metavar="NODE",
                                    help="Node name (default: the head), e.g. worker1."),
) -> None:
    """Open an SSH session on a cluster's node (OpenSSH, with the pinned host key)."""
    import os
    import shutil

    from skyc.cli.cmd_jobs import load_cluster
    from skyc.errors import ConfigError
    from skyc.runtime.sshconfig import write_config
    from skyc.settings.config import skyc_home

    info = load_cluster(cluster)
    chosen = [n for n in info.nodes if (n.name == node if node else n.rank == 0)]
    if not chosen:
        raise ConfigError(f"cluster '{cluster}' has no node named '{node}'",
                          hint="nodes: " + ", ".join(n.name for n in info.nodes))
    target = chosen[0]
    if target.transport == "local" and target.node_dir:
        _local_shell(cluster, target.name, target.rank, Path(target.node_dir), command)
    if target.transport != "ssh":
        where = f" (its directory: {target.node_dir})" if target.node_dir else ""
        raise ConfigError(f"cluster '{cluster}' runs on {info.cloud}: node {target.name} is "
                          f"not reached over SSH{where}",
                          hint=f"run commands there with: skyc exec {cluster} 'COMMAND'")
    ssh = shutil.which("ssh")
    if ssh is None:
        raise ConfigError("no `ssh` on PATH", hint="install OpenSSH's client")
    path = write_config(skyc_home())
    alias = cluster if target.rank == 0 else f"{cluster}-{target.name}"
    os.execv(ssh, ["ssh", "-F", str(path), alias, *(command or [])])


def _local_shell(cluster: str, name: str, rank: int, node_dir: Path,
                 command: list[str] | None) -> None:
    """A local node is a directory of this machine: a shell there (in the synced
    workdir when there is one), with HOME and the node's rank as its jobs see them."""
    import os

    from skyc.errors import ConfigError
    from skyc.settings.home import user_umask

    if not node_dir.is_dir():
        raise ConfigError(f"cluster '{cluster}': node {name}'s directory {node_dir} is gone",
                          hint="see the cluster's state with: skyc status --refresh")
    workdir = node_dir / "sky_workdir"
    os.chdir(workdir if workdir.is_dir() else node_dir)
    env = {**os.environ, "HOME": str(node_dir), "SKYPILOT_NODE_RANK": str(rank),
           "SKYC_CLUSTER": cluster, "SKYC_NODE": name}
    os.umask(user_umask())
    shell = env.get("SHELL") or "/bin/bash"
    argv = [shell, "-c", " ".join(command)] if command else [shell, "-i"]
    os.execvpe(argv[0], argv, env)


def register(app: typer.Typer) -> None:
    app.command("ssh")(ssh_cmd)
    app.command("ssh-config", help=_SSH_CONFIG_HELP)(ssh_config_cmd)
