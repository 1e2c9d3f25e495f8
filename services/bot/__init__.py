"""The bot service: plays every bot seat and every disconnected seat (托管) of the hands
it follows, and answers hints (BotService in protos/ddz/v1/bot.proto)."""
