"""Test helpers shared by the suites: a real AppServer process and a user client."""
