"""Profile submissions through the service: who may send one (a contest that takes them, on an
NVIDIA device), the worker's profile judging (the pipeline under the stand-in ncu, on this CPU),
the report kept beside the record and read by its submitter only."""

from __future__ import annotations

import shutil
from dataclasses import replace
from types import SimpleNamespace

import pytest

from judge.commands.client import profile_text
from judge.judging.record import JudgeResult
from judge.service import claims, db, worker
from judge.service.models import Contest, JudgingRow, ProfileReport
from judge.verdicts import Verdict
from tests.conftest import PROBLEMS
from tests.server.conftest import refused
from tests.server.test_api import auth, post_submission
from tests.server.test_service import submit
from tests.test_profiling import STANDIN


def test_profile_submissions_go_only_to_contests_that_take_them_on_a_gpu(s, config, world):
    s.add(Contest(slug="plain", title="P", problems=["vector_add"], device="cuda.h200"))
    s.add(Contest(slug="cpu", title="C", problems=["vector_add"], profile=True))
    s.add(Contest(slug="gpu", title="G", problems=["vector_add"], device="cuda.h200",
                  profile=True))
    s.commit()
    cuda = (PROBLEMS / "vector_add/solutions/AC/hopper_wgmma_fence.cu").read_text()
    with refused(403, "only in a contest that allows them"):
        submit(s, config, world["alice"], mode="profile")
    with refused(403, "only in a contest that allows them"):
        submit(s, config, world["alice"], language="cuda", source=cuda, contest_slug="plain",
               mode="profile")
    with refused(422, "profiling needs an NVIDIA GPU: cpu is judged on cpu"):
        submit(s, config, world["alice"], contest_slug="cpu", mode="profile")
    s.rollback()
    made, _ = submit(s, config, world["alice"], language="cuda", source=cuda,
                     contest_slug="gpu", mode="profile")
    assert made.mode == "profile"


@pytest.mark.skipif(not shutil.which("bwrap"), reason="bubblewrap is not installed")
def test_the_worker_profiles_the_last_sample_point_and_keeps_the_report(s, config, world, cpu,
                                                                       monkeypatch):
    from sandbox.bwrap import BwrapSandbox

    # a profile submission as the service stores one (here on the CPU, where the stand-in runs)
    source = (PROBLEMS / "vector_add/solutions/AC/loop.cpp").read_text()
    made, work = submit(s, config, world["alice"], source=source)
    made.mode = "profile"  # the store takes none on a CPU contest: set as if on a GPU one
    s.commit()
    pool = SimpleNamespace(sandbox=BwrapSandbox())
    monkeypatch.setattr(worker, "worker_pool", lambda: (cpu, pool))
    token = claims.claim(s, work.judging_id, "test-worker")
    s.commit()
    result, report = worker.run_judging(replace(config, ncu=str(STANDIN)), work.judging_id,
                                        token)
    assert result.verdict.value == "AC", result.message
    assert [t.name for t in result.tests] == ["tiny"] and result.time_ms is None
    assert result.profile["point"] == "tiny" and report.startswith(b"NCU-STAND-IN")
    assert "Duration" in profile_text(result.to_dict()["profile"])
    missing = replace(config, ncu="no-such-ncu")
    refusal, none = worker.run_judging(missing, work.judging_id, token)
    assert none is None and "need Nsight Compute" in refusal.message


def test_a_profile_report_goes_to_its_submitter(api):
    admin = auth(api, "admin")
    api.post("/api/contests", json={"slug": "gpu", "title": "G", "problems": ["vector_add"],
                                    "device": "cuda.h200", "profile": True}, headers=admin)
    cuda = (PROBLEMS / "vector_add/solutions/AC/hopper_wgmma_fence.cu").read_text()
    sent = post_submission(api, contest="gpu", mode="profile", language="cuda", source=cuda)
    assert sent.status_code == 202, sent.text
    sid = sent.json()["id"]
    assert api.get(f"/api/submissions/{sid}/profile.ncu-rep",
                   headers=auth(api, "alice")).status_code == 404  # not judged yet
    with db.session(api.config.database_url) as s:
        judging = s.query(JudgingRow).filter_by(submission_id=sid).one()
        token = claims.claim(s, judging.id, "gpu-worker")
        claims.finish(s, judging.id, token, JudgeResult(
            "vector_add", verdict=Verdict.AC, profile={
                "point": "tiny", "tool": "ncu", "report": "profile.ncu-rep",
                "report_bytes": 4, "kernels": [{"Kernel Name": "add", "Metric Name":
                                                "Duration", "Average": "2.1"}]}))
        judging_id = judging.id
    worker._store_report(api.config, judging_id, b"NCU!")
    record = api.get(f"/api/submissions/{sid}", headers=auth(api, "alice")).json()
    assert record["mode"] == "profile" and record["profile"]["kernels"][0]["Average"] == "2.1"
    got = api.get(f"/api/submissions/{sid}/profile.ncu-rep", headers=auth(api, "alice"))
    assert got.status_code == 200 and got.content == b"NCU!"
    assert api.get(f"/api/submissions/{sid}/profile.ncu-rep",
                   headers=auth(api, "bob")).status_code == 404
    worker._store_report(api.config, judging_id, b"again")  # a second worker's: replaces it
    with db.session(api.config.database_url) as s:
        assert s.get(ProfileReport, judging_id).data == b"again"
