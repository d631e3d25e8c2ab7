"""Test oracles: independent references the tests check the product against.

Not product code (nothing under model/, sim/, cli/ or runio/ imports them):
``queueing`` solves closed product-form networks exactly (MVA, log-space
normalising constants) for the closed-form and simulator tests; its own
tests are ``test_queueing.py`` here. Import as ``tests.oracles.queueing``.
"""
