from tests.support.webhost import client

__all__ = ["client"]
