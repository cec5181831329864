"""The campaign folder's format and checks moved to ``raceproof.reports.campaign_folder``.

This name still imports, for code written against it: ``spark_integration``
writes campaign folders and ``reports`` reads them, so the format lives with
the reader and the writer imports it (the layers depend one way).
"""

from raceproof.reports.campaign_folder import *  # noqa: F403
from raceproof.reports.campaign_folder import __all__ as __all__
