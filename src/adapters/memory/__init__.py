"""In-memory fakes of every port, for tests and the in-memory container."""
