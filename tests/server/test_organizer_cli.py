"""An organizer's contest from the command line against a live server (`kjudge serve`, no worker:
nothing here needs a verdict): contests created, edited, listed and shown, refused by field; a
new problem folder served once reloaded; submissions that find their contest."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import tarfile

import pytest

from tests.conftest import PROBLEMS, ROOT
from tests.server.stack import Stack

pytestmark = pytest.mark.slow
AC = PROBLEMS / "vector_add/solutions/AC/loop.cpp"
QUICK_ADD = ROOT / "tests/problems/quick_add"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("organizer")
    problems = tmp / "problems"
    problems.mkdir()
    shutil.copytree(PROBLEMS / "vector_add", problems / "vector_add")
    stack = Stack(tmp, None, "embedded", extra_env={"KJUDGE_PROBLEMS": str(problems)})
    stack.serve("--no-worker")
    stack.problems = problems
    yield stack
    stack.close()


def kjudge(server: Stack, *args: str, token: str | None = None) -> subprocess.CompletedProcess:
    env = {**server.env, "KJUDGE_SERVER": server.url, "KJUDGE_TOKEN": token or server.admin}
    return subprocess.run([sys.executable, "-m", "judge.cli", *map(str, args)], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=60)


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_a_contest_created_edited_listed_and_shown(server):
    created = ok(kjudge(server, "contest", "create", "cup", "--problems", "vector_add",
                        "--start", "now", "--duration", "2h", "--freeze-before-end", "30m",
                        "--languages", "cpp,torch", "--quota", "ranked=5/h", "--quota",
                        "ranked=40", "--public"))
    assert "contest cup created" in created and "(running)" in created
    contest = server.call("GET", "/api/contests/cup", server.admin).json()
    assert contest["quotas"] == {"ranked": {"per_hour": 5, "per_contest": 40}}
    span = [contest[k] for k in ("starts_at", "freeze_at", "ends_at")]
    assert span == sorted(span) and contest["public"] and contest["languages"] == ["cpp", "torch"]
    edited = ok(kjudge(server, "contest", "edit", "cup", "--title", "The Cup", "--no-public",
                       "--freeze", "none"))
    assert "The Cup" in edited
    after = server.call("GET", "/api/contests/cup", server.admin).json()
    assert after["title"] == "The Cup" and not after["public"] and after["freeze_at"] is None
    assert after["ends_at"] == contest["ends_at"]  # what no option gave is left as it was
    listed = ok(kjudge(server, "contest", "list"))
    assert any(line.split()[:2] == ["cup", "running"] for line in listed.splitlines())
    shown = ok(kjudge(server, "contest", "show", "cup"))
    assert "cup: The Cup (running)" in shown and "vector_add" in shown
    nothing = kjudge(server, "contest", "edit", "cup")
    assert nothing.returncode == 2 and "nothing to change" in nothing.stderr
    ok(kjudge(server, "contest", "edit", "cup", "--start=-2h", "--end=-1h"))  # over
    assert ok(kjudge(server, "contest", "show", "cup")).startswith("cup: The Cup (ended)")


@pytest.mark.parametrize("options,fragment", [
    (["--languages", "cuda"], "languages: cuda runs on cuda, not on this contest's device"),
    (["--languages", "fortran"], "languages: unknown language 'fortran'"),
    (["--device", "gpu"], "device: 'gpu' is no device kind"),
    (["--start", "now", "--end", "+1h", "--freeze", "+2h"], "ends_at must come after freeze_at"),
    (["--duration", "1h"], "--duration counts from --start"),
    (["--start", "tomorrow"], "'tomorrow' is no time"),
    (["--quota", "ranked=lots"], "say MODE=N/h or MODE=N"),
])
def test_a_contest_refused_names_the_field(server, options, fragment):
    refused = kjudge(server, "contest", "create", "bad", "--problems", "vector_add", *options)
    assert refused.returncode == 2 and fragment in refused.stderr, refused.stderr
    assert server.call("GET", "/api/contests/bad", server.admin).status_code == 404


def test_a_contest_on_a_device_its_problems_have_no_point_for_is_refused(server):
    folder = server.problems / "cpu_only"
    shutil.copytree(QUICK_ADD, folder)
    yaml = folder / "problem.yaml"
    yaml.write_text(yaml.read_text().replace("timed: false}", "timed: false, devices: [cpu]}"))
    try:
        ok(kjudge(server, "problem", "reload"))
        refused = kjudge(server, "contest", "create", "gpu", "--problems", "cpu_only",
                         "--device", "cuda.h100")
        assert refused.returncode == 2
        assert "problems: cpu_only has no test point for the cuda device" in refused.stderr
    finally:
        shutil.rmtree(folder)
        ok(kjudge(server, "problem", "reload"))


def test_a_new_problem_folder_is_served_once_reloaded(server):
    folder = server.problems / "quick_add"
    shutil.copytree(QUICK_ADD, folder)
    broken = server.problems / "broken"
    broken.mkdir()
    (broken / "problem.yaml").write_text("title: [unclosed\n")
    try:
        before = kjudge(server, "submit", "quick_add", QUICK_ADD / "solutions/AC/loop.cpp")
        assert before.returncode == 2 and "no problem 'quick_add'" in before.stderr
        reloaded = kjudge(server, "problem", "reload")
        assert reloaded.returncode == 1  # a folder there is not served: say so
        assert "quick_add" in reloaded.stdout.splitlines()[0]
        assert "not served: broken:" in reloaded.stdout
        after = ok(kjudge(server, "submit", "quick_add", QUICK_ADD / "solutions/AC/loop.cpp",
                          "--practice"))
        assert "queued (ranked) practice: outside any contest" in after
    finally:
        shutil.rmtree(folder)
        shutil.rmtree(broken)
        ok(kjudge(server, "problem", "reload"))


def test_a_submission_finds_its_contest(server):
    ok(kjudge(server, "contest", "create", "solo", "--problems", "vector_add", "--start",
              "now", "--duration", "1h"))
    sent = ok(kjudge(server, "submit", "vector_add", AC))
    assert "queued (ranked) in contest solo" in sent
    sid = sent.split()[1]
    assert server.call("GET", f"/api/submissions/{sid}", server.admin).json()["contest"] == "solo"
    listed = server.call("GET", "/api/submissions", server.admin).json()
    assert {"solo"} <= {row["contest"] for row in listed}
    ok(kjudge(server, "contest", "create", "duo", "--problems", "vector_add", "--start",
              "now", "--duration", "1h"))
    asked = kjudge(server, "submit", "vector_add", AC)
    assert asked.returncode == 2 and "say which with --contest SLUG, or --practice" in asked.stderr
    chosen = ok(kjudge(server, "submit", "vector_add", AC, "--contest", "duo"))
    assert "in contest duo" in chosen
    practice = ok(kjudge(server, "submit", "vector_add", AC, "--practice"))
    assert "practice: outside any contest" in practice
    for slug in ("solo", "duo"):  # over: later tests see no running contest of theirs
        ok(kjudge(server, "contest", "edit", slug, "--start=-2h", "--end=-1h"))


def test_unfreeze_over_the_api(server):
    ok(kjudge(server, "contest", "create", "frozen", "--problems", "vector_add",
              "--start=-2h", "--freeze=-1h", "--end", "+1h"))
    assert server.call("GET", "/api/contests/frozen", server.admin).json()["frozen"]
    assert "final board is published" in ok(kjudge(server, "contest", "unfreeze", "frozen"))
    assert not server.call("GET", "/api/contests/frozen", server.admin).json()["frozen"]
    ok(kjudge(server, "contest", "edit", "frozen", "--end=-1m"))


def _archive(entries: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:
        for info, data in entries:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data else None)
    return packed.getvalue()


def _link(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info


def test_a_problem_folder_synced_from_a_client_is_served(server, tmp_path):
    mine = tmp_path / "synced"
    shutil.copytree(QUICK_ADD, mine)
    sent = ok(kjudge(server, "problem", "sync", mine))
    assert "synced: sent" in sent and (server.problems / "synced" / "problem.yaml").is_file()
    assert server.call("GET", "/api/problems/synced", server.admin).status_code == 200
    # a broken one changes nothing: the folder there stays, still served
    (mine / "problem.yaml").write_text("title: [unclosed\n")
    broken = kjudge(server, "problem", "sync", mine)
    assert broken.returncode == 2 and "does not validate" in broken.stderr
    assert "Quick add" in (server.problems / "synced" / "problem.yaml").read_text()
    # nothing left beside the problems (a folder there that other tools would list)
    assert sorted(p.name for p in server.problems.iterdir()) == ["synced", "vector_add"]
    contestant = server.token_for("sync_student")
    refused = kjudge(server, "problem", "sync", QUICK_ADD, "--slug", "other", token=contestant)
    assert refused.returncode == 2 and refused.stderr.startswith("kjudge: 403")


@pytest.mark.parametrize("entry,fragment", [
    (tarfile.TarInfo("../escape.txt"), "outside the folder"),
    (tarfile.TarInfo("/etc/evil"), "outside the folder"),
    (_link("reference.py", "/etc/passwd"), "no links"),
])
def test_a_hostile_archive_is_refused_and_writes_nothing(server, entry, fragment):
    before = sorted(p.name for p in server.problems.parent.iterdir())
    body = _archive([(entry, b"" if entry.issym() else b"x")])
    answer = server.call("PUT", "/api/problems/evil/folder", server.admin, content=body)
    assert answer.status_code == 422 and fragment in answer.json()["error"]
    assert not (server.problems / "evil").exists()
    assert sorted(p.name for p in server.problems.parent.iterdir()) == before
    garbage = server.call("PUT", "/api/problems/evil/folder", server.admin, content=b"not a tar")
    assert garbage.status_code == 422 and "cannot be read" in garbage.json()["error"]
