"""Numbered schema migrations, one SQL file per step, per engine."""
