"""mindspore.train stand-in: the Callback base class."""


class Callback:
    def step_begin(self, run_context):
        pass

    def step_end(self, run_context):
        pass

    def on_train_end(self, run_context):
        pass

    def on_train_step_begin(self, run_context):
        self.step_begin(run_context)

    def on_train_step_end(self, run_context):
        self.step_end(run_context)
