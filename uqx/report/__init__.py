"""The report of a validation result: one HTML page (or Markdown) for all sets.

:mod:`~uqx.report.document` builds the page (:func:`report`, :func:`write_report`) from
the blocks of :mod:`~uqx.report.blocks` and the figures of :mod:`~uqx.report.figures`,
rendered by :mod:`~uqx.report.render`.
"""

from uqx.report.document import VERDICT_STYLE as VERDICT_STYLE
from uqx.report.document import diagnostic_figures as diagnostic_figures
from uqx.report.document import report as report
from uqx.report.document import report_format as report_format
from uqx.report.document import write_report as write_report
