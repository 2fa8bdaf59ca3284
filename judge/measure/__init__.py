"""The measurement engine: one test point's timing, from its plan (rounds.Plan) to its
measurement (point.measure_point). Trusted side, one room: the rounds (rounds.py), each call's
fresh inputs and the calls kept for checking (fresh_rounds.py), the files both sides map
(shared.py), the CPU's cache flush (flusher.py), what a point measured and is charged
(charging.py) and the statistics and score arithmetic (scoring.py)."""
