"""What the model hands to the outside world, above everything else in ``model``: the text a
counterexample prints (``render``) and the rule-level vectors every port runs (``vectors``)."""
