"""The large-audit wing: many citations through Crawlbase's Crawler, above the engine.

Pages are pushed to a Crawler (:mod:`.pusher`), their deliveries kept in a job's
SQLite store (:mod:`.job_store`) and served to each claim's fetch as the Crawling
API's answer (:mod:`.delivery_transport`); :mod:`.crawler_job` runs the job's claims
through the engine as their pages arrive, and :mod:`.recheck_work` rechecks recorded
claims the same way.
"""
