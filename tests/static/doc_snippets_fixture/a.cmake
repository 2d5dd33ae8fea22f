project(a)
