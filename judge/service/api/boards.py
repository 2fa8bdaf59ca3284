"""The API's leaderboard: a contest's board (public ones signed out) or every submission's, frozen as
the contest says."""

from __future__ import annotations

import json

from fastapi import APIRouter
from fastapi.responses import Response

from judge.service import boards, contests, errors
from judge.service.deps import OptionalUserDep, SessionDep

router = APIRouter(tags=["boards"])


@router.get("/api/leaderboard")
def leaderboard(s: SessionDep, contest: str | None = None,
                user: OptionalUserDep = None) -> Response:
    """A contest's board (readable signed out when the contest is public), or without
    `contest` every submission's (signed-in users). While a contest is frozen, all but
    organizers get it as it stood at the freeze, with the submissions pending since, and
    their own current results in `me.live`."""
    chosen = contests.visible_contest(s, contest, user) if contest else None
    if user is None and not (chosen is not None and chosen.public):
        raise errors.ServiceError(401, "sign in to see this board (only public contests' "
                                      "boards are open to visitors)")
    admin = user is not None and user.is_admin
    found = boards.results(s, chosen, live=admin)
    shown = "frozen" if "frozen_at" in found.board else "live"
    me = None
    if user is not None:
        key = boards.row_key(chosen, user.name, user.team)
        mine = boards.find_row(found.board["rows"], key)
        me = {"name": key[1], "team": key[0], "rank": mine["rank"] if mine else None,
              "total": mine["total"] if mine else 0.0}
        if shown == "frozen":
            now = boards.find_row(boards.results(s, chosen, live=True).board["rows"], key)
            me["live"] = {"total": now["total"] if now else 0.0,
                          "problems": now["problems"] if now else {}}
    head = {"me": me, "shown": shown, "contest": contest}
    # the board encoded once per change of the results, this reader's part in front
    body = json.dumps(head).encode()[:-1] + b"," + found.board_json[1:]
    return Response(body, media_type="application/json")
