"""Child-process bodies of the sharing tests, in a module a spawned process can import
by name (the tests put this folder on sys.path, which spawn passes on)."""


def set_in_child(td, key, value, done):
    td.set_(key, value)
    done.put(td.get(key).data)


def set_from_queue(inbox, done):
    td = inbox.get()
    td.update_({"s": "queued"})
    done.put(td["s"])


def fill_from_queue(queue, done):
    tensor = queue.get()
    tensor.fill_(7.0)
    done.put(type(tensor).__name__)
