"""mindspore.communication stand-in: RANK_FOR_TEST, else no group (as when
MindSpore runs without distributed init)."""
RANK_FOR_TEST = None


def get_rank():
    if RANK_FOR_TEST is None:
        raise RuntimeError("no communication group")
    return RANK_FOR_TEST
