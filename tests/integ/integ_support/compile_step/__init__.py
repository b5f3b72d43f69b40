"""The compile step's custom-resource function (``handler.py``), shipped as a Lambda asset."""
