"""The analysts' web app, served by the API process at `/`: sign in, submit, watch, review, export."""
