"""VisIT-Bench's living leaderboard in JSON (visit-bench.txt Sec. 1, Tables 3–4): the LLM judge's
and the crowd's players, each with its bootstrap interval, for the API of the curation recipe."""

from __future__ import annotations

from rest_framework import serializers


class PlayerOut(serializers.Serializer):
    player = serializers.CharField()
    elo = serializers.FloatField()
    low = serializers.FloatField(allow_null=True)
    high = serializers.FloatField(allow_null=True)
    matches = serializers.IntegerField()
    is_reference = serializers.BooleanField()
    win_rate = serializers.JSONField(allow_null=True)


class LeaderboardOut(serializers.Serializer):
    version_id = serializers.IntegerField(allow_null=True)
    judge = serializers.CharField(allow_blank=True)
    judgment_set_id = serializers.IntegerField(allow_null=True)
    rated_at = serializers.DateTimeField(allow_null=True)
    players = PlayerOut(many=True)
    crowd_players = PlayerOut(many=True)


def leaderboard_out(board: dict, version_id: int | None) -> dict:
    """``board.board``'s sets of ``version_id`` as ``LeaderboardOut`` data."""
    judge_set = board["judge_set"]
    body = {
        "version_id": version_id,
        "judge": judge_set.judge if judge_set else "",
        "judgment_set_id": judge_set.pk if judge_set else None,
        "rated_at": judge_set.results_computed_at if judge_set else None,
        "players": board["players"],
        "crowd_players": board["human_players"],
    }
    return LeaderboardOut(body).data
