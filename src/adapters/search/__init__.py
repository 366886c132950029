"""The search port: the homepage reader and the SearXNG, Tavily and Brave APIs."""
