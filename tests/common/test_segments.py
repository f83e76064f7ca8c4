from common.segments import text_segments


def test_overlapping_marks_cut_the_text_into_labelled_pieces():
    pieces = text_segments("abcdefgh", [(1, 5, "x"), (3, 7, "y")])
    assert pieces == [("a", []), ("bc", ["x"]), ("de", ["x", "y"]), ("fg", ["y"]), ("h", [])]
    assert "".join(text for text, _ in pieces) == "abcdefgh"


def test_marks_outside_the_text_are_clamped_and_empty_text_has_no_piece():
    assert text_segments("abc", [(-4, 2, "x"), (2, 99, "y")]) == [("ab", ["x"]), ("c", ["y"])]
    assert text_segments("", [(0, 3, "x")]) == []
