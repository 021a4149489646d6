"""Certify and operate: NVCRE Certifications and thresholds, their schedules, and NVSentinel inputs."""
