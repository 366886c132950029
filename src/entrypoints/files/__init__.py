"""Reading and writing the CSV files people hand to firmsift, for every entrypoint: the CLI's
files, the API's and the web app's uploads, the evaluation's labels."""
