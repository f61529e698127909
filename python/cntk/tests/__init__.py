"""cntk.tests: the helpers CNTK's own examples import from its test package (test_utils)."""
