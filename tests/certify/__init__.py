"""Tests of ``aicr_gen/certify``: NVCRE Certifications, their thresholds and jobs, per pool, and ``bisect``."""
