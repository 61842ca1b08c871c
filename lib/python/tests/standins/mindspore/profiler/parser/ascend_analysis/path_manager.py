"""Stand-in: what MindSpore 2.4's dynamic_profiler.py uses of PathManager."""
import os


class PathManager:
    @staticmethod
    def check_input_directory_path(path):
        pass

    @staticmethod
    def make_dir_safety(path):
        os.makedirs(path, exist_ok=True)

    @staticmethod
    def remove_file_safety(path):
        if os.path.exists(path):
            os.remove(path)
