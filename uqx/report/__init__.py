"""The HTML report of a validation result (:mod:`~uqx.report.html`)."""
