"""The demo workspace (`telha demo_setup`, what `make run` loads): its people and documents
in this folder, and the command that loads them. The top layer: it may use every app."""
