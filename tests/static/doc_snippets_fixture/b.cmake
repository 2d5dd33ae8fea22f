project(b)
