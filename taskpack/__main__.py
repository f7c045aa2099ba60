from taskpack.cli import main

main(prog_name="taskpack")
