"""A response text that a browser shows, and JavaScript counts, otherwise than Python stores and counts it, and
passages of it: for the tests that a highlight names the same passage on every path (the coding page, the API, the
judgment import, the exports and the bundle)."""

NFD, NFC = "cafe\u0301", "caf\u00e9"  # the same word, decomposed and composed
FAMILY = "\U0001F468\u200d\U0001F469\u200d\U0001F467"  # three emoji joined by zero-width joiners
FLAG = "\U0001F1EB\U0001F1F7"  # two regional indicators
HEBREW = "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd"  # right to left
LAST = "Last paragraph, long enough to be cut short in its chip \U0001F9E0 and then some more words."
TEXT = (f"First line ends here.\r\nSecond line: {NFD} and {NFC}.\r\n\r\n"
        f"Family {FAMILY} and flag {FLAG} joined.\n"
        f"Hebrew: {HEBREW}, done.\n"
        "Escapes: &amp; <i>x</i> a\u200bb zero width.\n"
        "Tabs\tand  double  spaces  stay, \U0001D4B3 math.\n" + LAST)
PASSAGES = ["ends here.\r\nSecond", NFD, NFC, f"{FAMILY} and flag {FLAG}", HEBREW, "&amp; <i>x</i> a\u200bb",
            "double  spaces", "\U0001D4B3 math", f"line: {NFD} and {NFC}.\r\n\r\nFamily", "Tabs\tand"]
