"""The database backend of the default run: Django's PostgreSQL backend, which starts the embedded server
(``server.py``) before its first connection in each process."""
