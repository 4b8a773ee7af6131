class Tools:
    def legacy(self, a, b=3, c: int = 1, d=None):
        """
        A legacy method.
        :param a: First thing
        :param d: Maybe nothing
        """
        return f"{a}{b}{c}{d}"
