"""Triage (`bin/pcgkit triage`): a crash log as people paste it -> which known failure, on which versions, what to do."""
