"""Caffe2's session module: run Nets, ExecutionSteps, Plans, Tasks and
TaskGroups, and fetch the tasks' outputs.

    session = LocalSession()
    session.run(task_group)
    output.fetch()

LocalSession runs everything on this process, every node's tasks
concurrently in one workspace (Caffe2's behaviour): the current workspace
when it was made, or the one given. GLOBAL runs act on that workspace;
PRIVATE runs give each task a child workspace whose new blobs are dropped
afterwards (outputs are created in the session's workspace first, so they
survive).
"""
from doppio import core
from doppio import workspace
from doppio.task import Cluster, Task, TaskGroup, WorkspaceType


class CompiledRunnable(object):
    """A runnable compiled for a session class (session.compile)."""

    def __init__(self, obj, session_class):
        self.obj = obj
        self.session_class = session_class


class Session(object):
    """Runs runnables; subclasses say where."""

    _compiled_cache = {}

    def __init__(self):
        self._open = True

    def is_open(self):
        return self._open

    @classmethod
    def compile(cls, runnable, workspace_type=None, setup_net_list=None):
        if isinstance(runnable, CompiledRunnable):
            if cls != runnable.session_class:
                raise AssertionError('Runnable was compiled for a different session type. '
                                     'Need: {}, got: {}'.format(
                                         cls.__name__, runnable.session_class.__name__))
            return runnable
        if runnable in cls._compiled_cache:
            return cls._compiled_cache[runnable]
        if isinstance(runnable, TaskGroup):
            if workspace_type:
                if runnable.workspace_type() and runnable.workspace_type() != workspace_type:
                    raise AssertionError('Require {} but already have {}'.format(
                        workspace_type, runnable.workspace_type()))
                runnable._workspace_type = workspace_type
            group = runnable
        else:
            group = TaskGroup(workspace_type=workspace_type or WorkspaceType.GLOBAL)
            if isinstance(runnable, Task):
                group.add(runnable)
            elif isinstance(runnable, core.ExecutionStep):
                group.add(Task(step=runnable))
            elif isinstance(runnable, core.Plan):
                steps = runnable.Steps()
                if not steps:
                    raise AssertionError('the plan has no steps')
                group.add(Task(step=steps[0] if len(steps) == 1 else steps))
            else:
                group.add(Task(step=core.execution_step('runnable', runnable)))
        compiled = CompiledRunnable(cls._compile_task_group(group, setup_net_list),
                                    session_class=cls)
        cls._compiled_cache[runnable] = compiled
        return compiled

    def run(self, runnable, workspace_type=None, setup_net_list=None):
        """Runs a TaskGroup, Task, Plan, ExecutionStep or Net (or list)."""
        if not self.is_open():
            raise AssertionError('Session is closed.')
        if runnable is None:
            raise AssertionError('Got a none runnable.')
        self._run_compiled(self.compile(runnable, workspace_type, setup_net_list).obj)

    def close(self):
        if self.is_open():
            self._do_close()
            self._open = False

    def fetch_output(self, output):
        raise NotImplementedError()

    def _run_compiled(self, compiled):
        raise NotImplementedError()

    @classmethod
    def _compile_task_group(cls, task_group, setup_net_list=None):
        return task_group

    def _do_close(self):
        pass

    def __enter__(self):
        if not self._open:
            raise AssertionError('Session already closed.')
        return self

    def __exit__(self, ex_type, value, traceback):
        if ex_type is None:
            self.close()


class LocalSession(Session):
    """Runs every task in this process, all nodes remapped to one."""

    def __init__(self, ws=None):
        Session.__init__(self)
        self._ws = ws or workspace.C.Workspace.current

    @classmethod
    def _compile_task_group(cls, task_group, setup_net_list=None):
        with Cluster():
            task = task_group.to_task()
        plan = core.Plan('task_group_plan')
        plan.AddStep(task.get_step())
        return plan, task.output_list(), task.workspace_type()

    def _run_compiled(self, compiled):
        plan, output_list, workspace_type = compiled
        outputs = []
        for name in output_list.names():
            self._ws.create_blob(str(name))
            outputs.append(core.BlobReference(str(name)))
        output_list.set_values(outputs, _fetch_func=self._fetch_output)
        # PRIVATE tasks already run in child workspaces (their steps set
        # create_workspace); the plan itself runs in the session's.
        self._ws.run(plan)

    def _fetch_output(self, output):
        return self._ws.blobs[str(output)].fetch()
