"""Capture: stream a source's changes (watermarks included) into the landing zone without Kafka."""
