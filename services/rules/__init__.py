"""The rules service: the authority over every hand in play (RulesService in
protos/ddz/v1/rules.proto). It decides each command with the hand aggregate and
publishes what happened."""
