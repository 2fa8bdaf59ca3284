"""The host's processes as /proc (Linux) shows them: whose child each is, and which have ended."""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")


def stat(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command name: state, parent, ... (OSError: gone)."""
    return (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()


def parents() -> dict[int, int]:
    """pid -> parent pid, for every process on the host."""
    table = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            try:
                table[int(entry.name)] = int(stat(int(entry.name))[1])
            except OSError:  # gone meanwhile
                continue
    return table


def children(pid: int) -> set[int]:
    return {child for child, parent in parents().items() if parent == pid}


def tree(root: int) -> set[int]:
    """The process and all its descendants (those in sessions of their own too, which a process
    group or session would miss)."""
    table, found, frontier = parents(), {root}, [root]
    while frontier:
        parent = frontier.pop()
        below = [pid for pid, ppid in table.items() if ppid == parent]
        found.update(below)
        frontier.extend(below)
    return found


def ended(pid: int) -> bool:
    """Gone, or a zombie waiting for its reaper."""
    try:
        return stat(pid)[0] in ("Z", "X")
    except OSError:
        return True
