"""The table service: the players' front door. Opens tables, starts hands, passes the
seats' moves to the rules service, enforces turn deadlines and streams each seat's view
(TableService in protos/ddz/v1/table.proto)."""
