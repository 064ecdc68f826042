"""``latdoc verify --remedy retry``: no retries against a retry policy, on the endpoint's
own failures.

- ``send``: the same requests under each arm; ``analysis``: how often an answer came and
  how long it took; ``run``: both arms kept as runs; ``render``: the rates with intervals.
"""

from latdoc.features.verify.retry.render import RETRY_SCHEMA, render_retry, retry_to_dict
from latdoc.features.verify.retry.run import RetryVerdict, verify_retry

__all__ = ["RETRY_SCHEMA", "RetryVerdict", "render_retry", "retry_to_dict", "verify_retry"]
